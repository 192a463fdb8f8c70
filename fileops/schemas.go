package fileops

const readInput = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["path"],
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File to read, relative to the workspace (or absolute inside it)."},
    "offset": {"type": "integer", "minimum": 1, "description": "First line to return, 1-based. Default 1."},
    "limit": {"type": "integer", "minimum": 1, "description": "Most lines to return. Default: as many as fit in the read limit."}
  }
}`

const readOutput = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["path"],
  "properties": {
    "path": {"type": "string", "description": "The file, relative to the workspace when inside it."},
    "first_line": {"type": "integer", "description": "Number of the first line returned."},
    "last_line": {"type": "integer", "description": "Number of the last line returned (first_line-1 when none)."},
    "total_lines": {"type": "integer", "description": "Lines in the whole file."},
    "more": {"type": "boolean", "description": "Lines remain after last_line."},
    "truncated": {"type": "boolean", "description": "The read limit cut the window short."},
    "binary": {"type": "boolean", "description": "The file has NUL bytes in its first 8 KiB; no content is returned."},
    "size": {"type": "integer", "description": "File size in bytes."},
    "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "SHA-256 of the whole file as read, where the backend hashed it while counting lines (absent for a binary file or a backend without a resident helper)."}
  }
}`

const writeInput = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["path", "content"],
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File to create or replace, relative to the workspace."},
    "content": {"type": "string", "description": "The whole new content of the file."},
    "force": {"type": "boolean", "description": "Write even if the file changed since this session last read or wrote it (otherwise refused with stale_file). Default false."}
  }
}`

const writeOutput = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["path"],
  "properties": {
    "path": {"type": "string", "description": "The file, relative to the workspace when inside it."},
    "action": {"enum": ["created", "overwritten"], "description": "Whether the file existed."},
    "bytes_written": {"type": "integer", "description": "Bytes now in the file."},
    "lines_added": {"type": "integer", "description": "Lines added compared with the old content."},
    "lines_removed": {"type": "integer", "description": "Lines removed compared with the old content."}
  }
}`

const patchInput = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["path", "old_string", "new_string"],
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File to change, relative to the workspace."},
    "old_string": {"type": "string", "minLength": 1, "description": "Exact text to replace, including whitespace and indentation. Include enough surrounding lines to make it unique."},
    "new_string": {"type": "string", "description": "Text to put in its place."},
    "replace_all": {"type": "boolean", "description": "Replace every occurrence instead of requiring exactly one. Default false."},
    "force": {"type": "boolean", "description": "Patch even if the file changed since this session last read or wrote it (otherwise refused with stale_file). Default false."}
  }
}`

const patchOutput = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["path"],
  "properties": {
    "path": {"type": "string", "description": "The file, relative to the workspace when inside it."},
    "replacements": {"type": "integer", "description": "Occurrences replaced."},
    "diff": {"type": "string", "description": "Unified diff of the change."},
    "lines_added": {"type": "integer"},
    "lines_removed": {"type": "integer"},
    "candidate_lines": {"type": "array", "items": {"type": "integer"}, "description": "On no_match or multiple_matches: lines where old_string, or its first line, occurs."}
  }
}`

const searchInput = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["pattern"],
  "properties": {
    "pattern": {"type": "string", "minLength": 1, "description": "For content: a regular expression (ripgrep syntax, or POSIX extended when ripgrep is absent). For files: a file-name glob such as \"*_test.go\"; a pattern without * ? or [ matches names containing it."},
    "path": {"type": "string", "minLength": 1, "description": "Directory or file to search, relative to the workspace. Default \".\"."},
    "glob": {"type": "string", "minLength": 1, "description": "Only files whose name matches this glob, such as \"*.go\"."},
    "max_results": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Most results to return. Default 100."},
    "target": {"enum": ["content", "files"], "description": "Search file contents (default) or file names."}
  }
}`

const searchOutput = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["path", "matches"],
  "properties": {
    "path": {"type": "string", "description": "The directory searched, relative to the workspace when inside it."},
    "matches": {
      "type": "array",
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": ["path"],
        "properties": {
          "path": {"type": "string"},
          "line": {"type": "integer"},
          "text": {"type": "string"}
        }
      }
    },
    "truncated": {"type": "boolean", "description": "More results exist than max_results."},
    "engine": {"enum": ["rg", "grep", "find", "helper"], "description": "The program that searched (helper: the resident helper's own walk by descriptor, Go regular expressions)."}
  }
}`
