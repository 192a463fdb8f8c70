package pipeline_test

import (
	"context"
	"path"

	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/tool"
)

// allowAll is the policy and approval that allow everything. It lives only in tests: a
// pipeline is never built without a real policy and approval. As a policy it resolves
// nothing: paths are only joined with the workspace and cleaned, so it is no boundary.
type allowAll struct{}

// Check allows, with every path joined lexically with the workspace.
func (allowAll) Check(_ context.Context, req *pipeline.Request) (pipeline.Verdict, error) {
	ws := req.Env.Describe().Workspace
	paths := make([]tool.ResolvedPath, len(req.PathRefs))
	for i, r := range req.PathRefs {
		p := r.Path
		if !path.IsAbs(p) {
			p = path.Join(ws, p)
		}
		paths[i] = tool.ResolvedPath{Arg: r.Arg, Raw: r.Path, Resolved: path.Clean(p), Access: r.Access}
	}
	return pipeline.Verdict{Decision: pipeline.Allow, Code: "allowed", DecidedBy: "policy:default", Paths: paths}, nil
}

// Approve allows.
func (allowAll) Approve(context.Context, *pipeline.Request) (pipeline.Verdict, error) {
	return pipeline.Verdict{Decision: pipeline.Allow, Code: "auto_approved", DecidedBy: "approval:default"}, nil
}
