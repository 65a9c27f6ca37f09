module github.com/elicitvault/elicitvault

go 1.26

require (
	github.com/go-jose/go-jose/v4 v4.1.8 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/modelcontextprotocol/go-sdk v1.8.0 // indirect
)
