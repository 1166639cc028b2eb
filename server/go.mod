module clientlab/server

go 1.26
