module github.com/libtrainrt/trainrt/bench/go_signal

go 1.19

require github.com/libtrainrt/trainrt/bindings/go v0.0.0

replace github.com/libtrainrt/trainrt/bindings/go => ../../bindings/go
