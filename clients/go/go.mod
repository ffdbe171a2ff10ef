module pathd.dev/client

go 1.19
