module github.com/elicitvault/elicitvault

go 1.26
