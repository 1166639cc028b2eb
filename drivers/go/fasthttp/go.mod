module clientlab/drivers/go/fasthttp

go 1.26.0

require (
	clientlab/labdriver v0.0.0
	github.com/valyala/fasthttp v1.78.0
)

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/molecule-man/go-brrr v1.3.1 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
)

replace clientlab/labdriver => ../_lib
