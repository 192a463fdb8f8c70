package httpapi

import (
	_ "embed"
	"net/http"
)

// openapiDoc describes every route of [Server.Routes]; a test holds the two together.
//
//go:embed openapi.json
var openapiDoc []byte

// OpenAPI returns the OpenAPI 3.1 document served at /v1/openapi.json.
func OpenAPI() []byte { return openapiDoc }

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openapiDoc)
}
