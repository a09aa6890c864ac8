/**
 * Real schemas with their own valid and invalid test documents (a slice of SchemaStore, vendored under
 * tests/fixtures/json-schema-schemastore): through the json pack with no model, no invalid document
 * ends validated by deleting information, and every valid document passes untouched.
 */
import { describe, expect, it } from "vitest";
import { checkCorpus, readFixtures } from "../../scripts/schemastore-corpus.js";

const entries = readFixtures("tests/fixtures/json-schema-schemastore");

describe("a slice of SchemaStore through the json pack, no model", () => {
  it("refuses none of its schemas, passes every valid document, validates no invalid one through a lossy removal", async () => {
    const figures = await checkCorpus(entries);
    expect(figures.schemas).toBe(5);
    expect(figures.refused).toEqual({});
    expect(figures.invalidDocuments).toBeGreaterThan(50);
    expect(figures.validNotPassed).toEqual([]);
    expect(figures.lossyValidated.lossless).toBe(0);
    // The aggressive setting is what deletes information: the slice has documents it "fixes" that way.
    expect(figures.lossyValidated.aggressive).toBeGreaterThan(0);
  }, 120_000);
});
