module github.com/elicitvault/elicitvault/release

go 1.25.0

require golang.org/x/mod v0.36.0
