/**
 * A listener's filter as the dashboard edits it (docs/api.md, "Listeners: filters and headers"): the name
 * patterns one a line, the data conditions as JSON text. Both empty is no filter: every message.
 */
export type Filter = { names?: string[]; data?: unknown };
export type FilterDraft = { names: string; data: string };

export const EMPTY_DRAFT: FilterDraft = { names: "", data: "" };

export function draftOf(filter: Filter | null | undefined): FilterDraft {
  return {
    names: (filter?.names ?? []).join("\n"),
    data: filter?.data === undefined ? "" : JSON.stringify(filter.data, null, 2),
  };
}

export type FilterParse = { ok: true; filter: Filter | null } | { ok: false; message: string };

/**
 * The filter a draft stands for. Only what the browser cannot send is refused here (data that is not JSON);
 * everything else, an operator or a path included, is the server's to judge, so its errors name the path.
 */
export function filterOf(draft: FilterDraft): FilterParse {
  const filter: Filter = {};
  const names = draft.names.split("\n").map((line) => line.trim()).filter(Boolean);
  if (names.length > 0) filter.names = names;
  if (draft.data.trim()) {
    try {
      filter.data = JSON.parse(draft.data);
    } catch (error) {
      return { ok: false, message: `The data conditions are not valid JSON: ${(error as Error).message}` };
    }
  }
  return { ok: true, filter: Object.keys(filter).length > 0 ? filter : null };
}

/** Which box an error path of the API points into (`/filter/names/0`, `/filter/data/total/$gte`). */
export function partOf(path: string): "names" | "data" | null {
  const match = /^\/filter\/(names|data)(\/|$)/.exec(path);
  return match ? (match[1] as "names" | "data") : null;
}
