module github.com/healthtech/partner-open-platform/sdk/go

go 1.24

require gopkg.in/yaml.v3 v3.0.1
