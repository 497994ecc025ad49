// A run cut off by a reload or a closed tab (listed `interrupted`): the run panel opens
// on it rather than on an idle view that reads as if nothing had happened. It shows the
// latest step the store kept, of the run's own max steps (a resume's larger one
// included), and puts that max steps in the run options, so that what the panel says
// and what Resume does agree.
export function showCutOff($, list) {
  const r = list.find((x) => x.status === "interrupted");
  if (!r) return null;
  $("run-step").textContent = String(r.step);
  $("run-total").textContent = r.max_steps ? String(r.max_steps) : "?";
  if (r.max_steps) {
    $("run-progress-bar").style.width = `${Math.min(100, (100 * r.step) / r.max_steps)}%`;
    $("run-max-steps").value = String(r.max_steps);
    // the quick run's line would speak of another number of steps
    $("run-hint").textContent = `max steps ${r.max_steps}: run ${r.id}'s own, for its Resume below; ` +
      "clear “max steps” for the record's full length";
  }
  $("run-state").textContent = `run ${r.id} was cut off at step ${r.step} when the page closed: ` +
    "Resume it from the list below";
  return r;
}
