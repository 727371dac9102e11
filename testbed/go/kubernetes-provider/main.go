// Command pulumi-resource-kubernetes serves the real pulumi-kubernetes provider.
//
// Upstream's own main package embeds generated files that are git-ignored and therefore absent
// from the module zip; this one embeds the schema the module does ship (copied beside this file
// by the test bed's build, with its version field set) and calls the same serve entry point.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var schema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, schema, terraformMapping)
}
