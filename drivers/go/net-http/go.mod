module clientlab/drivers/go/net-http

go 1.26

require clientlab/labdriver v0.0.0

replace clientlab/labdriver => ../_lib
