module clientlab/labdriver

go 1.24
