import { type TObject, Type } from "@sinclair/typebox";

/**
 * The self-describing events the service asks clients to fire, as TypeBox models: the one
 * source the Iglu routes serve (`/v1/iglu`) and the decide answer's exposures follow. A published
 * version never changes; a new field is a new version (1-0-1, or 2-0-0 when not additive).
 */
export interface EventSchema {
  readonly name: string;
  /** SchemaVer MODEL-REVISION-ADDITION. */
  readonly version: string;
  readonly description: string;
  readonly data: TObject;
}

/** `data` of the exposure events the keyed decide answer lists (DESIGN.md's response contract). */
export const ExperimentExposureData = Type.Object(
  {
    experiment: Type.String({ minLength: 1, description: "The experiment's name in the site document." }),
    variant: Type.String({ minLength: 1, description: "The variant the subject was assigned." }),
    preview: Type.Boolean({
      description: "The decision came from the staged preview document: exclude it from analysis.",
    }),
  },
  { additionalProperties: false },
);

export const EVENT_SCHEMAS: readonly EventSchema[] = Object.freeze([
  {
    name: "experiment_exposure",
    version: "1-0-0",
    description: "A subject was exposed to a variant of an experiment by a decision of the service.",
    data: ExperimentExposureData,
  },
]);

const SELF_DESCRIBING_META = "http://iglucentral.com/schemas/com.snowplowanalytics.self-desc/schema/jsonschema/1-0-0#";

/** An `iglu:` URI. */
export function igluUri(vendor: string, name: string, version: string): string {
  return `iglu:${vendor}/${name}/jsonschema/${version}`;
}

/** The self-describing JSON Schema of an event under a vendor (the model as plain JSON). */
export function selfDescribing(vendor: string, schema: EventSchema): Record<string, unknown> {
  return {
    $schema: SELF_DESCRIBING_META,
    description: schema.description,
    self: { vendor, name: schema.name, format: "jsonschema", version: schema.version },
    ...JSON.parse(JSON.stringify(schema.data)),
  };
}
