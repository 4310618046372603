# SPDX-License-Identifier: Apache-2.0
"""Writes examples/data/search_collection.txt: 3,000 short notes on ten everyday topics, made here
from templates (no outside text), the collection examples/search/search.py searches.

    python3 examples/search/make_collection.py
"""
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "search_collection.txt")

TOPICS = {
    "cooking": (["the risotto", "a sourdough loaf", "the tomato sauce", "a lentil soup", "the pancakes", "a chicken curry",
                 "the pie crust", "a vegetable stir-fry", "the rice", "a chocolate cake", "the omelette", "a pot of beans"],
                ["burns at the bottom", "comes out too dry", "needs more salt", "sticks to the pan", "takes an hour to cook",
                 "tastes better the next day", "freezes well for a month", "should rest before serving"],
                ["stir it more often", "lower the heat", "add a splash of water", "use a heavier pan", "soak it overnight",
                 "bake it ten minutes longer", "season it at the end"]),
    "travel": (["the night train", "a cheap flight", "the ferry to the island", "a hostel near the station", "the rental car",
                "a mountain hut", "the airport bus", "a visa application", "the city pass", "a camping site"],
               ["is often fully booked", "costs less on weekdays", "leaves before sunrise", "needs a reservation",
                "was cancelled because of the storm", "accepts only cash", "is closed in winter"],
               ["book two weeks ahead", "check the timetable online", "travel light", "arrive an hour early",
                "keep a copy of your passport", "ask at the tourist office"]),
    "computing": (["the laptop", "my home router", "the printer", "a backup drive", "the database server", "the phone's battery",
                   "a web browser", "the build script", "the password manager", "an old keyboard", "the video call"],
                  ["keeps disconnecting", "runs out of space", "is very slow after the update", "will not start",
                   "crashes when I open large files", "overheats in the afternoon", "lost all its settings"],
                  ["restart it and install the updates", "clear the cache", "replace the cable", "free some disk space",
                   "check the logs", "reset it to factory settings", "update the driver"]),
    "health": (["a sore throat", "back pain", "a sprained ankle", "trouble sleeping", "a headache", "a seasonal allergy",
                "high blood pressure", "a bad cough", "dry skin", "a toothache"],
               ["gets worse at night", "lasts more than a week", "started after running", "comes back every spring",
                "keeps me awake", "makes it hard to concentrate"],
               ["drink more water", "rest for a few days", "see a doctor", "stretch every morning", "avoid screens before bed",
                "use a humidifier", "walk for thirty minutes a day"]),
    "gardening": (["the roses", "my tomato plants", "the lawn", "the apple tree", "a herb garden", "the compost heap",
                   "the strawberries", "a hedge", "the potted basil", "the vegetable beds"],
                  ["have yellow leaves", "are full of aphids", "dry out in summer", "grow too slowly", "need pruning in March",
                   "were eaten by snails", "flower only once a year"],
                  ["water them early in the morning", "add some compost", "move them to the sun", "cut back the dead wood",
                   "mulch the soil", "plant marigolds nearby"]),
    "money": (["my savings account", "the monthly budget", "a student loan", "the electricity bill", "a tax return",
               "the mortgage", "a credit card", "the pension plan", "an insurance policy", "the grocery spending"],
              ["keeps going up", "is due at the end of the month", "has a high interest rate", "is hard to understand",
               "was charged twice", "pays almost nothing"],
              ["compare the offers", "set up an automatic transfer", "call the bank", "keep all the receipts",
               "pay it off early", "track every expense for a month"]),
    "sports": (["the football match", "my running plan", "the swimming lessons", "a cycling race", "the tennis club",
                "a marathon", "the climbing gym", "the ski season", "a yoga class", "the basketball team"],
               ["starts at seven", "was postponed because of rain", "is too crowded on Mondays", "costs too much",
                "left me exhausted", "needs better shoes"],
               ["warm up for ten minutes", "train three times a week", "join a beginners' group", "drink before you are thirsty",
                "rest one day in between", "buy the gear second-hand"]),
    "science": (["the telescope", "a chemistry experiment", "the solar eclipse", "a fossil", "the weather balloon",
                 "a microscope slide", "the comet", "a volcano", "the tide", "a magnet"],
                ["can be seen from the northern hemisphere", "changes colour when heated", "is millions of years old",
                 "depends on the moon", "is visible only at night", "attracts iron but not copper"],
                ["look it up in an encyclopedia", "measure it twice", "write down every result", "ask a teacher",
                 "repeat the experiment", "use a dark place away from city lights"]),
    "home": (["the kitchen tap", "a squeaky door", "the washing machine", "the heating", "a cracked tile", "the fridge",
              "a broken window latch", "the smoke alarm", "the bathroom fan", "a wobbly chair"],
             ["is leaking", "makes a loud noise", "stopped working", "beeps every few minutes", "smells of damp",
              "does not close properly"],
             ["tighten the screws", "replace the washer", "change the battery", "call a plumber", "oil the hinges",
              "clean the filter"]),
    "music": (["the guitar", "a piano lesson", "the choir", "my old records", "the concert", "a violin", "the drum kit",
               "a song I wrote", "the headphones", "the school band"],
              ["sounds out of tune", "is too loud for the neighbours", "starts next Friday", "needs new strings",
               "was recorded in one take", "crackles on the left side"],
              ["tune it before playing", "practise every day", "buy tickets early", "use a metronome",
               "play it slower at first", "clean the contacts"]),
}

FORMS = [
    "{s} {p}.",
    "{s} {p}; {f}.",
    "If {s} {p}, {f}.",
    "Tip: when {s} {p}, {f}.",
    "Why {s} {p} and what to do: {f}.",
    "Note to self: {s} {p}, so {f}.",
]


def main():
    rng = random.Random(5)
    lines, seen = [], set()
    while len(lines) < 3000:
        topic = rng.choice(list(TOPICS))
        subjects, problems, fixes = TOPICS[topic]
        s = rng.choice(subjects)
        line = rng.choice(FORMS).format(s=s, p=rng.choice(problems), f=rng.choice(fixes))
        line = line[0].upper() + line[1:]
        if line not in seen:
            seen.add(line)
            lines.append(line)
    with open(OUT, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
