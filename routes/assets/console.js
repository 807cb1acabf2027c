// The console's one script (served by the console itself; the pages have no inline script). Without it every
// page works: ids and secrets are selectable text, and times read in UTC.
//
// "Copy" buttons: next to secrets shown once (data-copy: the id of the element holding the text) and next to
// ids (data-copy-text: the text itself).
document.querySelectorAll("button[data-copy], button[data-copy-text]").forEach((button) => {
  const text = () =>
    button.dataset.copyText ?? document.getElementById(button.dataset.copy)?.textContent.trim() ?? "";
  if (!navigator.clipboard || !text()) return;
  button.hidden = false;
  button.addEventListener("click", async () => {
    const label = button.textContent;
    await navigator.clipboard.writeText(text());
    button.textContent = "Copied";
    setTimeout(() => (button.textContent = label), 1500);
  });
});

// Times: the UTC text becomes the reader's local time with its zone; the UTC text stays as the title.
const format = new Intl.DateTimeFormat(undefined, {
  year: "numeric",
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
  timeZoneName: "short",
});
document.querySelectorAll("time[datetime]").forEach((time) => {
  const at = new Date(time.getAttribute("datetime"));
  if (Number.isNaN(at.getTime())) return;
  time.title = time.textContent;
  time.textContent = format.format(at);
});
