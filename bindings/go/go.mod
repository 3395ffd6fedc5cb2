module github.com/libtrainrt/trainrt/bindings/go

go 1.19
