// Package getopt holds the option tables of the programs coding agents run, as each
// program's own help states them (testdata/options.tsv of the differential harness, made
// by its TestGenerateOptions in the effects container), and a model of how getopt_long —
// and git's parse-options, which reads options alike — parses an argument vector: long
// names and their unambiguous prefixes, --opt=value and --opt value, -ovalue and -o value,
// clustered short options, and -- before the operands.
//
// It exists for two checks of the shell-risk classifier: the differential harness's
// effects pass runs a seed for every option that names an output file, and the spelling
// check respells seeds and requires the classifier to judge every spelling of the same
// options alike. The model is pure Go, so the spelling check fuzzes without starting a
// process.
package getopt
