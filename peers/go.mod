module github.com/sluicehq/sluice/peers

go 1.26.0

require github.com/sluicehq/sluice v0.0.0

require golang.org/x/sync v0.25.0

replace github.com/sluicehq/sluice => ../
