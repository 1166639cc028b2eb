module clientlab/testdrivers/planted-go

go 1.26

require clientlab/labdriver v0.0.0

replace clientlab/labdriver => ../../../drivers/go/_lib
