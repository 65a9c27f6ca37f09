package oauth

// ErrUnknownProvider is the error of a provider name no Provider has, for
// the external tests.
var ErrUnknownProvider = errUnknownProvider
