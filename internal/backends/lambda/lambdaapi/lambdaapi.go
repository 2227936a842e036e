// Package lambdaapi holds the Lambda Cloud API's wire types that hydra's client
// (internal/backends/lambda) and the Lambda emulator (internal/emulator/lambda) share: one definition
// of each JSON shape, so the two can never drift apart.
package lambdaapi

// Region is one of Lambda's regions ("us-east-1", "Virginia, USA").
type Region struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// APIError is the error object of Lambda's error body ({"error": APIError, ...}).
type APIError struct {
	Code       string `json:"code"`
	Message    string `json:"message"`
	Suggestion string `json:"suggestion,omitempty"`
}
