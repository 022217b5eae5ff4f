// Loaded before the test files (bunfig.toml): once all of them have run, their temporary
// folders go.
import { afterAll } from "bun:test";
import { removeScratchDirs } from "./helpers/scratch-dirs";

afterAll(removeScratchDirs);
