/** asl-validator 4 ships JavaScript only; the part of its API the tests use. */
declare module "asl-validator" {
  interface AslValidationError {
    message?: string;
    [key: string]: unknown;
  }
  interface AslValidatorOptions {
    checkPaths?: boolean;
    checkArn?: boolean;
  }
  function aslValidator(
    definition: unknown,
    options?: AslValidatorOptions,
  ): { isValid: boolean; errors: AslValidationError[]; errorsText: (separator?: string) => string };
  export default aslValidator;
}
