// Package openapi holds the generated OpenAPI definitions of the capn types.
package openapi
