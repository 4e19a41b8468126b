module kstate-kit.invalid/examples/go_testee

go 1.21
