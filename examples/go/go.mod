// Example programs of the brisk Go binding. License: MIT.
module brisk/examples/go

go 1.19

require brisk/bindings/go v0.0.0

// The binding from this repository; outside it, point this at a checkout.
replace brisk/bindings/go => ../../bindings/go
