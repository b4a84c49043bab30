// Package kubernetes holds deployment manifests; its test keeps the sluice
// configuration they embed valid.
package kubernetes

import (
	"bytes"
	"os"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/internal/config"
)

func TestEmbeddedConfigValidates(t *testing.T) {
	data, err := os.ReadFile("sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	found := false
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			break
		}
		if doc["kind"] != "ConfigMap" {
			continue
		}
		cm, _ := doc["data"].(map[string]any)
		embedded, _ := cm["sluice.yaml"].(string)
		if _, err := config.Parse("configmap sluice.yaml", []byte(embedded)); err != nil {
			t.Fatalf("the ConfigMap's sluice.yaml does not validate:\n%v", err)
		}
		found = true
	}
	if !found {
		t.Fatal("no ConfigMap with a sluice.yaml found")
	}
}
