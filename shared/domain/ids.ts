/** Ids are positive integers; as text (a path, a JWT `sub`, a provider reference) decimal without sign or leading zero. */
const ID_TEXT = /^[1-9]\d{0,15}$/;

/** The id written in `text`, or null when it is not one (or beyond JavaScript's safe integers). */
export function parseIdText(text: string | undefined): number | null {
  if (text === undefined || !ID_TEXT.test(text)) return null;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : null;
}
