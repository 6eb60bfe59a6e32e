"""Antonyms of common English adjectives and adverbs, for FEI's world-coherence corruption.

FEI's participants swapped a few of a story's adjectives and adverbs for their antonyms
(Castricato et al. 2021, §5.1). No lexical database can be installed with the project (WordNet's
data comes from outside the package registries), so the pairs are listed here: common
descriptors of people, things, places and manners, each with one clear opposite. A word in
several pairs keeps the opposite of its first pair ("old" → "young", "new" → "old").

Reference: Castricato, L. et al. (2021). Fabula Entropy Indexing: Objective Measures of Story
Coherence. Third Workshop on Narrative Understanding, §5.1 and appendix A.1.
"""

from __future__ import annotations

# Each pair is read both ways. Only positive degrees: spaCy tags "older" JJR, not JJ.
# fmt: off
PAIRS = (
    # people
    ("old", "young"), ("new", "old"), ("happy", "sad"), ("glad", "sorry"), ("kind", "cruel"),
    ("gentle", "rough"), ("brave", "cowardly"), ("calm", "nervous"), ("polite", "rude"),
    ("rich", "poor"), ("strong", "weak"), ("healthy", "sick"), ("tired", "rested"),
    ("hungry", "full"), ("thirsty", "sated"), ("awake", "asleep"), ("alive", "dead"),
    ("wise", "foolish"), ("clever", "stupid"), ("honest", "dishonest"), ("friendly", "hostile"),
    ("generous", "stingy"), ("patient", "impatient"), ("proud", "ashamed"), ("lucky", "unlucky"),
    ("famous", "unknown"), ("beautiful", "ugly"), ("pretty", "plain"), ("fat", "thin"),
    ("tall", "short"), ("busy", "idle"), ("careful", "careless"), ("cheerful", "gloomy"),
    ("angry", "pleased"), ("loud", "quiet"), ("silent", "noisy"), ("lonely", "accompanied"),
    ("safe", "dangerous"), ("free", "captive"), ("married", "single"), ("innocent", "guilty"),
    ("hopeful", "hopeless"), ("certain", "uncertain"), ("willing", "unwilling"),
    ("familiar", "strange"), ("male", "female"), ("fearless", "fearful"), ("sober", "drunk"),
    # things and places
    ("big", "small"), ("large", "little"), ("huge", "tiny"), ("long", "short"),
    ("wide", "narrow"), ("broad", "narrow"), ("thick", "thin"), ("deep", "shallow"),
    ("high", "low"), ("heavy", "light"), ("hard", "soft"), ("smooth", "rough"),
    ("sharp", "blunt"), ("hot", "cold"), ("warm", "cool"), ("wet", "dry"), ("clean", "dirty"),
    ("bright", "dim"), ("dark", "light"), ("light", "heavy"), ("empty", "full"),
    ("open", "closed"), ("near", "far"), ("close", "distant"), ("early", "late"),
    ("fast", "slow"), ("quick", "slow"), ("easy", "difficult"), ("simple", "complicated"),
    ("cheap", "expensive"), ("fresh", "stale"), ("sweet", "bitter"), ("ripe", "unripe"),
    ("raw", "cooked"), ("loose", "tight"), ("straight", "crooked"), ("flat", "steep"),
    ("round", "square"), ("whole", "broken"), ("broken", "whole"), ("complete", "incomplete"),
    ("stormy", "calm"), ("sunny", "cloudy"), ("windy", "still"), ("rainy", "dry"),
    ("noisy", "silent"), ("crowded", "deserted"), ("busy", "quiet"), ("public", "private"),
    ("ancient", "modern"), ("modern", "ancient"), ("real", "fake"), ("true", "false"),
    ("right", "wrong"), ("correct", "incorrect"), ("possible", "impossible"),
    ("important", "trivial"), ("useful", "useless"), ("strange", "ordinary"),
    ("ordinary", "extraordinary"), ("common", "rare"), ("visible", "invisible"),
    ("golden", "grey"), ("white", "black"), ("green", "withered"), ("bare", "covered"),
    ("tidy", "messy"), ("neat", "untidy"), ("solid", "hollow"), ("shiny", "dull"),
    ("good", "bad"), ("fine", "awful"),
    ("pleasant", "unpleasant"), ("nice", "nasty"), ("wonderful", "terrible"),
    ("great", "awful"), ("beautiful", "hideous"), ("peaceful", "violent"),
    ("first", "last"), ("front", "back"), ("upper", "lower"), ("inner", "outer"),
    ("left", "right"), ("north", "south"), ("east", "west"), ("same", "different"),
    ("many", "few"), ("present", "absent"),
    ("happy", "unhappy"), ("secret", "known"), ("wild", "tame"), ("thin", "thick"),
    # manners (adverbs)
    ("slowly", "quickly"), ("quietly", "loudly"), ("softly", "loudly"), ("gently", "roughly"),
    ("happily", "sadly"), ("carefully", "carelessly"), ("early", "late"), ("always", "never"),
    ("often", "rarely"), ("usually", "seldom"), ("sometimes", "never"), ("easily", "hardly"),
    ("kindly", "cruelly"), ("politely", "rudely"), ("bravely", "timidly"),
    ("calmly", "nervously"), ("patiently", "impatiently"), ("warmly", "coldly"),
    ("brightly", "dimly"), ("openly", "secretly"), ("eagerly", "reluctantly"),
    ("willingly", "unwillingly"), ("proudly", "shamefully"), ("safely", "dangerously"),
    ("honestly", "dishonestly"), ("wisely", "foolishly"), ("firmly", "loosely"),
    ("tightly", "loosely"), ("deeply", "shallowly"), ("heavily", "lightly"),
    ("together", "apart"), ("forward", "backward"), ("fast", "slowly"),
)
# fmt: on


def _table(pairs: tuple[tuple[str, str], ...]) -> dict[str, str]:
    table: dict[str, str] = {}
    for first, second in pairs:
        table.setdefault(first, second)
        table.setdefault(second, first)
    return table


ANTONYMS: dict[str, str] = _table(PAIRS)
