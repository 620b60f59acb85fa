/** Unit tests: aws-cdk-lib/assertions against synthesized templates. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    // isolatedModules: transpile only; `tsc --noEmit` in check.sh does the type checking.
    '^.+\\.tsx?$': ['ts-jest', { isolatedModules: true }],
  },
  // Template validation at construct time is slow and the synth step keeps it on.
  setupFiles: ['<rootDir>/test/setup-env.js'],
};
