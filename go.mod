module github.com/anemone-go/anemone

go 1.26

require (
	github.com/ebitengine/purego v0.11.3
	github.com/stretchr/testify v1.12.1
	github.com/x448/float16 v0.8.4
	gonum.org/v1/gonum v0.17.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
