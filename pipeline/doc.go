// Package pipeline is the one road every tool call travels, from a model's proposal to a
// result and a receipt:
//
//	registry → input schema → policy → approval → pre-hooks → scheduler → handler →
//	output schema → post-hooks → result + receipt
//
// [Pipeline.RunBatch] reads top to bottom as those steps; [Pipeline.RunBatchFunc] is the same
// batch with each result handed on as soon as it may leave (batch.go says why). Each step that refuses a call
// returns early through the same function that writes its receipt, so no call reaches a
// handler except through every step before it, and no call ends without a receipt. A panic
// or error in policy, approval or a hook fails closed: the call is denied with
// policy_error.
//
// Decision is not outcome: the receipt records what was decided (allow, deny, ask; by what;
// why) apart from what happened (dispatch started, handler started, executed, failed, timed
// out, interrupted). For calls that run, a "dispatched" event reaches the ledger before the
// handler starts, so a crash mid-call leaves a line that says so.
package pipeline
