/** Unit tests: aws-cdk-lib/assertions against synthesized templates. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    // tsconfig's isolatedModules makes ts-jest transpile only; `tsc --noEmit` in check.sh does
    // the type checking.
    '^.+\\.tsx?$': 'ts-jest',
  },
  // Template validation at construct time is slow and the synth step keeps it on.
  setupFiles: ['<rootDir>/test/setup-env.js'],
};
