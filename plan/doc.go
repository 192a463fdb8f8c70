// Package plan holds a session to an ordered list of steps, each allowing some tools.
//
// A plan is the caller's word on what a session is for ("first read, then write one file"):
// a model that wanders off the plan is stopped before anything runs, not corrected after.
// It is enforced twice, as the pipeline's other rules are: as a policy check when the call is
// decided (so that no person is asked about a call the plan refuses), and as a pre-hook just
// before the handler (so that a call later in a batch meets the step the earlier calls left).
// Both refuse with status blocked and code pre_hook_blocked, naming the current step and
// what it allows; the call gets a receipt and has no effect.
//
// A post-hook moves the plan on: a successful call of the step's completing tool (any of its
// tools when none is named) counts towards the step, which is done after Calls of them and
// the next step becomes current; a call that ran and failed (failed, timeout, interrupted)
// marks the step failed, and it stays current so that the model may try again. Once every
// step is done the plan is complete and every further call is blocked. Refusals do not move
// the plan. The state lives with the session in memory: a named session reopened in another
// process starts its plan again.
package plan
