package shellrisk

// codesUsedByGo are the reason codes the classifier gives from Go rather than from the rules
// file; NewClassifier checks the rules define each one.
var codesUsedByGo = []string{
	codeParseError, codeUnknownProgram, codeDynamicCommand, codeDynamicPath, codePipeToShell,
	codeRunsScript, codeInterpreterCode, codeRecursiveDeleteRoot, codeRecursiveDeleteSystem,
	codeRecursiveDeleteWorkspace, codeDeleteOutside, codeWriteOutside, codeSystemFileWrite,
	codeDeviceWrite, codeCredentialAccess, codeMetadataAccess, codeForkBomb, codeRedirectWrite,
	codeEnvHijack, codeTooComplex, codeExfiltration, codeHostMount, codeInteractive,
	codeRecursiveModifySystem, codeRawSocket, codeSymlinkOutside, codeAirlockState, codeVCSConfigWrite,
	codeWritesFiles, codeInternalError, codeSignalsOther, codeDeletesFiles, codeIrreversibleLoss, codeDeviceRead, codeDownloadAndRun, codeHostNotAllowed, codeWriteOutsideRoots,
	codeInternalAddress, codeRepoProgram, codeRunsCode,
}

const (
	codeParseError               = "parse_error"
	codeUnknownProgram           = "unknown_program"
	codeDynamicCommand           = "dynamic_command"
	codeDynamicPath              = "dynamic_path"
	codePipeToShell              = "pipe_to_shell"
	codeRunsScript               = "runs_script"
	codeInterpreterCode          = "interpreter_code"
	codeRecursiveDeleteRoot      = "recursive_delete_root"
	codeRecursiveDeleteSystem    = "recursive_delete_system"
	codeRecursiveDeleteWorkspace = "recursive_delete_workspace"
	codeDeleteOutside            = "delete_outside_workspace"
	codeWriteOutside             = "write_outside_workspace"
	codeSystemFileWrite          = "system_file_write"
	codeDeviceWrite              = "device_write"
	codeCredentialAccess         = "credential_access"
	codeMetadataAccess           = "metadata_access"
	codeForkBomb                 = "fork_bomb"
	codeRedirectWrite            = "redirect_write"
	codeEnvHijack                = "env_hijack"
	codeTooComplex               = "too_complex"
	codeExfiltration             = "exfiltration"
	codeHostMount                = "host_mount"
	codeInteractive              = "interactive_shell"
	codeRecursiveModifySystem    = "recursive_modify_system"
	codeRawSocket                = "raw_network_socket"
	codeSymlinkOutside           = "symlink_outside_workspace"
	codeAirlockState             = "airlock_state"
	codeVCSConfigWrite           = "vcs_config_write"
	codeWritesFiles              = "writes_files"
	codeInternalError            = "internal_error"
	codeSignalsOther             = "signals_other_process"
	codeDeletesFiles             = "deletes_files"
	codeIrreversibleLoss         = "irreversible_loss"
	codeDeviceRead               = "device_read"
	codeDownloadAndRun           = "download_and_run"
	codeHostNotAllowed           = "host_not_allowed"
	codeWriteOutsideRoots        = "write_outside_roots"
	codeInternalAddress          = "internal_address"
	codeRepoProgram              = "repo_program"
	codeRunsCode                 = "runs_code"
)
