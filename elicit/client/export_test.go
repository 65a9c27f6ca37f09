package client

// Names the package keeps unexported, for its external tests.
var (
	CheckURL       = checkURL
	NewFormRequest = newFormRequest
)

const MaxRounds = maxRounds
