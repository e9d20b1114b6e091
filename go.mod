module github.com/ratewise/ratewise

go 1.26

require github.com/oklog/ulid/v2 v2.1.2
