// The page's script in the OpenFeature web SDK test: the stock web SDK and OFREP web provider,
// bundled by Bun.build, with no svc extension (no svc.features in the context).
import { OFREPWebProvider } from "@openfeature/ofrep-web-provider";
import { OpenFeature } from "@openfeature/web-sdk";

type Context = Record<string, string | Record<string, string>>;

const client = OpenFeature.getClient();

const flags = {
  async start(context: Context): Promise<void> {
    await OpenFeature.setContext(context);
    // The page's own origin: its server passes /ofrep/* on to the service with the key.
    await OpenFeature.setProviderAndWait(
      new OFREPWebProvider({ baseUrl: (globalThis as unknown as { location: { origin: string } }).location.origin }),
    );
  },
  async setContext(context: Context): Promise<void> {
    await OpenFeature.setContext(context);
  },
  read() {
    return {
      section: client.getObjectDetails("section", {}),
      headline: client.getObjectDetails("headline", {}),
      hidden: client.getObjectDetails("hidden", {}),
      paywall: client.getObjectDetails("paywall", { fallback: true }),
    };
  },
};

(globalThis as unknown as { flags: typeof flags }).flags = flags;
