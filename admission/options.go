package admission

import "errors"

// Validate reports every invalid field of o, one error each
// (errors.Join). Zero values are valid: they mean the defaults New
// applies; so are the negative QueueSize, QueueTimeout and SampleWindow
// that switch a feature off.
func (o Options) Validate() error {
	var errs []error
	bad := func(msg string) { errs = append(errs, errors.New("admission: "+msg)) }
	if !(o.MaxSaturation >= 0 && o.MaxSaturation <= 1) { // also NaN
		bad("MaxSaturation must be in (0, 1] (0: the default)")
	}
	if !(o.SmoothingFactor >= 0 && o.SmoothingFactor <= 1) {
		bad("SmoothingFactor must be in (0, 1] (0: the default)")
	}
	if !(o.MinShare >= 0 && o.MinShare < 1) {
		bad("MinShare must be in [0, 1)")
	}
	if o.MaxQueuedPerTenant < 0 {
		bad("MaxQueuedPerTenant must not be negative")
	}
	if o.MaxTrackedTenants < 0 {
		bad("MaxTrackedTenants must not be negative")
	}
	if o.CoDelTarget < 0 {
		bad("CoDelTarget must not be negative")
	}
	if o.CoDelInterval < 0 {
		bad("CoDelInterval must not be negative")
	}
	return errors.Join(errs...)
}
