module clientlab/testdrivers/br-go

go 1.26

require clientlab/labdriver v0.0.0

require github.com/andybalholm/brotli v1.2.0

replace clientlab/labdriver => ../../../drivers/go/_lib
