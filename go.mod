module github.com/gatehouse-dev/gatehouse

go 1.26.8

require (
	github.com/oklog/ulid/v2 v2.1.2
	golang.org/x/crypto v0.58.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/kr/pretty v0.3.0 // indirect
	gopkg.in/check.v1 v1.0.0-20201130134442-10cb98267c6c // indirect
)
