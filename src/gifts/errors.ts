import { AppError } from "../infra/errors";

/** The gift-link capability's refusals (docs/gift-links.md); nothing is minted on any of them. */
export const giftsNotEnabled = () => new AppError("not_found", "Gift links are not enabled on this site.");
export const unknownGift = () => new AppError("not_found", "Unknown gift link.");
export const unknownGifter = () => new AppError("unknown_gifter", "The gifter is not a user of this tenant.");
export const unknownArticle = () =>
  new AppError("unknown_article", "The content descriptor does not verify or names another article.");
export const allowanceSpent = () =>
  new AppError("gift_allowance_spent", "The gifter has no gift links left this month.");
