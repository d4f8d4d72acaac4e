// Minifies wasm-bindgen's JS glue with terser (pinned and installed by xtask
// next to wasm-opt, on PATH as `terser`): 60 KB of readable glue is 8.4 KB
// brotli, 27 KB minified 6.5 KB (docs/performance.md, "Issue 25's cuts").
// Trunk's own minifier gives up on the glue (`export { … as default }`) and
// ships it as it is.
//
// Two ways to call it:
//   node minify-glue.mjs FILE.js …   minifies each file in place (the embed).
//   node minify-glue.mjs             as Trunk's post_build hook (Trunk.toml):
//     in a release build, minifies every .js file in TRUNK_STAGING_DIR and
//     puts each one's new sha384 in index.html in place of the old one, so the
//     page's subresource integrity still holds. A debug build is left alone.

import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

function sha384(bytes) {
  return "sha384-" + createHash("sha384").update(bytes).digest("base64");
}

function minify(file) {
  try {
    execFileSync("terser", [file, "--module", "--compress", "--mangle", "--output", file], {
      stdio: ["ignore", "inherit", "inherit"],
    });
  } catch (err) {
    const missing = err.code === "ENOENT";
    console.error(
      missing
        ? "minify-glue: `terser` is not on PATH; `cargo xtask run|test` installs it into " +
            "target/tools (put target/tools/node_modules/.bin on PATH)"
        : `minify-glue: terser failed on ${file}`,
    );
    process.exit(1);
  }
}

const files = process.argv.slice(2);
if (files.length > 0) {
  files.forEach(minify);
} else if (process.env.TRUNK_PROFILE === "release") {
  const stage = process.env.TRUNK_STAGING_DIR;
  if (!stage) {
    console.error("minify-glue: TRUNK_STAGING_DIR is not set (run it as Trunk's post_build hook)");
    process.exit(1);
  }
  const indexPath = join(stage, "index.html");
  let index = readFileSync(indexPath, "utf8");
  for (const name of readdirSync(stage).filter((n) => n.endsWith(".js"))) {
    const path = join(stage, name);
    const before = sha384(readFileSync(path));
    minify(path);
    const after = sha384(readFileSync(path));
    if (index.includes(before)) {
      index = index.split(before).join(after);
    } else if (index.includes("integrity=")) {
      console.error(`minify-glue: index.html holds no integrity for ${name} (${before})`);
      process.exit(1);
    }
  }
  writeFileSync(indexPath, index);
}
