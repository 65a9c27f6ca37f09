module github.com/elicitvault/elicitvault/cmd

go 1.26.0

replace github.com/elicitvault/elicitvault => ../

require (
	github.com/elicitvault/elicitvault v0.0.0-00010101000000-000000000000
	github.com/rogpeppe/go-internal v1.16.0
	golang.org/x/term v0.47.0
)

require (
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/tools v0.26.0 // indirect
)
