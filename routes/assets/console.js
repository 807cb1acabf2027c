// The console's one enhancement: "Copy" buttons next to secrets shown once. Without script the secret is
// plain selectable text, and the button stays hidden.
document.querySelectorAll("button[data-copy]").forEach((button) => {
  const target = document.getElementById(button.dataset.copy);
  if (!target || !navigator.clipboard) return;
  button.hidden = false;
  button.addEventListener("click", async () => {
    await navigator.clipboard.writeText(target.textContent.trim());
    button.textContent = "Copied";
  });
});
