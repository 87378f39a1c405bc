module github.com/anemone-go/anemone

go 1.26

require (
	github.com/stretchr/testify v1.12.1
	github.com/x448/float16 v0.8.4
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
