module github.com/airlock-dev/airlock

go 1.26.8

require github.com/hashicorp/go-hclog v1.6.3

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/containerd/errdefs v1.0.0 // indirect
	github.com/docker/docker v28.5.2+incompatible // indirect
	github.com/fatih/color v1.13.0 // indirect
	github.com/mattn/go-colorable v0.1.12 // indirect
	github.com/mattn/go-isatty v0.0.14 // indirect
	github.com/opencontainers/runtime-spec v1.3.0 // indirect
	github.com/santhosh-tekuri/jsonschema/v5 v5.3.1 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/term v0.48.0 // indirect
	mvdan.cc/sh/v3 v3.14.1 // indirect
)
