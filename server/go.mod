module clientlab/server

go 1.26

require golang.org/x/net v0.57.0
