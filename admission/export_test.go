package admission

// NewTimingAll is New with sampling off: every request that is not Untimed
// is timed, however high the rate. For tests that compare the two.
func NewTimingAll(o Options) (*Controller, error) { return newController(o, 0) }

// TolerateFade is how long a tolerance's bound takes to fade once it ends.
const TolerateFade = tolerateFade
