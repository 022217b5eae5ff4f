#!/usr/bin/env bun
import { keepFilesPrivate } from "../../db/private-files";
import { run } from "./run";

keepFilesPrivate();

const code = await run(process.argv.slice(2), {
  env: process.env,
  stdout: (s) => process.stdout.write(s),
  stderr: (s) => process.stderr.write(s),
});
process.exit(code);
