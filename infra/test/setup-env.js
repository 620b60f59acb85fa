// The synth step in check.sh keeps CDK's built-in template validation on; unit tests skip it
// for speed.
process.env.CDK_VALIDATION = 'false';
