// Command quickstart limits one user to 3 requests per minute, counted
// exactly over any minute, in memory. README.md shows main.go verbatim.
package main
