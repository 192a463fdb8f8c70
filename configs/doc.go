// Package configs owns Airlock's configuration: the JSON Schema every config file is checked
// against (airlock.schema.json and the section schemas beside it), commented example files,
// and the loader that turns a TOML file into a validated [Config].
//
// A file is checked in three steps so that a mistake is reported where it was made: the
// schema catches unknown keys and wrong types and names the key (`environment.timeout:
// expected number or string`), decoding fills a struct that starts from [Default], and
// [Config.Validate] checks what a schema cannot say. Decoding reads a key that a backend's
// record has renamed under its former name too, with a note the backend's Describe shows, so
// that a file written for an older Airlock still loads. With no file, the defaults serve: the
// local backend on the current directory, receipts under .airlock/.
package configs
