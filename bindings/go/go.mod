module brisk/bindings/go

go 1.19
