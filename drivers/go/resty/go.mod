module clientlab/drivers/go/resty

go 1.26

require (
	clientlab/labdriver v0.0.0
	github.com/go-resty/resty/v2 v2.17.2
)

require golang.org/x/net v0.43.0 // indirect

replace clientlab/labdriver => ../_lib
